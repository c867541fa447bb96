rsa-lab bench model --ior /var/cache/rsa-bench/ior-a7a010c799b29fd2 --runs 3 --rates 500mbit,1gbit,2gbit --cells 500mbit:2048x1M,1gbit:2048x1M,1gbit:512x4M,2gbit:2048x1M --json
