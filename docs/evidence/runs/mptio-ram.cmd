rsa bench mptio --profile full --target ram --json
