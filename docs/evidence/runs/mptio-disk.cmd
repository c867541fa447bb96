rsa bench mptio --profile full --target disk --json
