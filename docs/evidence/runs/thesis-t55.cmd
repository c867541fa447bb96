rsa-lab bench thesis --profile full --case t55 --json
