rsa-lab bench io500 --ior /var/cache/rsa-bench/ior-a7a010c799b29fd2 --runs 5 --json
