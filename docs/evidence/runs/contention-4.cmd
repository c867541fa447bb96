rsa-lab bench contention --hosts 4 --ranks 512 --size 4M --runs 5 --json
