def total(n):
    """Return 1 + 2 + ... + n."""
    s = 0
    for i in range(n):
        s += i
    return s
