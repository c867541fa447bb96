rsa-lab bench metabench --profile full --target disk -k -C -S -U -A --delete --mdtest /var/cache/rsa-bench/ior-a7a010c799b29fd2 --json
