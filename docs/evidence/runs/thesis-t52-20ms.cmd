rsa-lab bench thesis --profile full --case t52 --latency 20ms --ram-at-1g --json
