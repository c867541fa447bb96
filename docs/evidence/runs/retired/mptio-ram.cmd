rsa-lab bench mptio --profile full --target ram --json
