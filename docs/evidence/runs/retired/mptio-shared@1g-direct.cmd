rsa-lab bench mptio --profile full --target shared@1g -I --json
