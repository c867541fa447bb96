rsa-lab bench contention --hosts 1,2,4 --ranks 512 --size 4M --json
