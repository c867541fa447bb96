rsa-lab bench thesis --profile full --case t52 --latency 0 --ram-at-1g --local=false --runs 10 --ranks 512 --size 4M --json
