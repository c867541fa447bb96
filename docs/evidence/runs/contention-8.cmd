rsa-lab bench contention --hosts 8 --ranks 512 --size 4M --runs 3 --json
