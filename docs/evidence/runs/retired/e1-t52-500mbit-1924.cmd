rsa-lab bench thesis --profile full --case t52 --latency 0 --ram-at-1g --local=false --runs 10 --ram-at-1g-rate 500mbit --json
