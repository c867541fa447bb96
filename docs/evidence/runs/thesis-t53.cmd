rsa-lab bench thesis --profile full --case t53 --json
