grep -c ok /data/log.txt
grep fail /data/log.txt | wc -l
awk '{ s += $3 } END { print s }' /data/log.txt
sed -n '1,5p' /data/log.txt | tr a-z A-Z
sort -k3 -n /data/log.txt | head -3
cut -d' ' -f2 /data/log.txt | sort | uniq -c | sort -rn | head -3
grep -E 'user[0-3]' /data/log.txt | awk '{ print $1 }' | tail -1
sed 's/status=//' /data/log.txt | awk '$4 == "ok"' | wc -l
tr ' ' '\n' < /data/log.txt | grep -c user
head -50 /data/log.txt | tail -10 | cut -c1-10
awk 'NR % 10 == 0 { print $2 }' /data/log.txt | sort -u | wc -l
grep -v ok /data/log.txt | sed 's/fail/FAIL/' | head -2
wc -l < /data/log.txt
sort -t' ' -k2,2 -k1,1n /data/log.txt | head -1
awk '{ count[$2]++ } END { for (u in count) n++; print n }' /data/log.txt
grep -n 'user6' /data/log.txt | head -1 | cut -d: -f1
sed -n '$p' /data/log.txt
grep -o 'status=[a-z]*' /data/log.txt | sort | uniq -c
awk '$3 > 50' /data/log.txt | cut -d' ' -f1 | tail -1
echo done
