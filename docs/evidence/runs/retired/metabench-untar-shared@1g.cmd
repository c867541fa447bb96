rsa-lab bench metabench --profile full --target shared@1g -k -T --json
