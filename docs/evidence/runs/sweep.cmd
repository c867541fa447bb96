rsa bench sweep --profile full --json
