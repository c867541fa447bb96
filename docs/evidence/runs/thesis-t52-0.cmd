rsa-lab bench thesis --profile full --case t52,tlc --latency 0 --ram-at-1g --json
