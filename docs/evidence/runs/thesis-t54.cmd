rsa bench thesis --profile full --case t54 --json
