rsa-lab bench thesis --profile full --case t54 --json
