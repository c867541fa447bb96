rsa-lab bench thesis --profile full --case t51 --json
