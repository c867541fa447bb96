rsa-lab bench metabench --profile full --target ram -k -T --json
