rsa-lab bench tools --profile full --tool mdtest --target ram --ior /var/cache/rsa-bench/ior-a7a010c799b29fd2 --json
