rsa-lab bench metabench --profile full --target shared@1g -k -n 3 -C -S -U -A --delete --mdtest /var/cache/rsa-bench/ior-a7a010c799b29fd2 --json
