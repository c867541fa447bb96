rsa-lab bench contention --hosts 1,2 --ranks 512 --size 4M --runs 5 --json
