grep -c "" "$1"
