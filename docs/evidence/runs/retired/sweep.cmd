rsa-lab bench sweep --profile full --json
