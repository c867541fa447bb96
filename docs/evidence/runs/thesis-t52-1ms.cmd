rsa-lab bench thesis --profile full --case t52 --latency 1ms --ram-at-1g --json
