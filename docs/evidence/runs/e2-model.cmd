rsa-lab bench model --runs 3 --rates 500mbit,1gbit,2gbit --cells 500mbit:2048x1M,1gbit:2048x1M,1gbit:512x4M,2gbit:2048x1M --json
