rsa-lab bench mptio --profile full --target disk --json
