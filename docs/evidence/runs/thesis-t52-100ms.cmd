rsa-lab bench thesis --profile full --case t52 --latency 100ms --ram-at-1g --runs 1 --json
