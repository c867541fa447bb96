rsa-lab bench tools --profile quick --tool fio --target disk --ior /var/cache/rsa-bench/ior-a7a010c799b29fd2 --json
