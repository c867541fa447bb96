rsa-lab bench metabench --profile full --target disk -k -T --json
