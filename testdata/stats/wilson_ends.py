#!/usr/bin/env python3
"""Reference values for stats.WilsonCounts ("wilson_ends"), independent of gonum.

    python3 testdata/stats/wilson_ends.py

prints the values runtime/stats/wilson_test.go and runtime/metrics'
tests pin: Wilson's score interval, alpha^(1/n) below when all n are right,
Jeffreys' bound towards the end one count from it (where further out), by
symmetry at 0 and 1. Jeffreys' bound solves I_q(1.5, n-0.5) = 0.025 by
bisection on the power series of the incomplete beta function; coverage is a
binomial sum, and its local mean averages 400 true scores within +-1/n.
Standard library only.
"""
import math
z = 1.959963984540054
def lbeta(a,b): return math.lgamma(a)+math.lgamma(b)-math.lgamma(a+b)
def ibeta_small(x,a,b):
    # I_x(a,b) = x^a/(a B(a,b)) * sum_k (1-b)_k/k! * a/(a+k) x^k, small x
    s=0.0; term=1.0; k=0
    while True:
        add=term*a/(a+k)
        s+=add
        if abs(add)<1e-18*abs(s) and k>5: break
        term*= (k+1-b)/(k+1)*x
        k+=1
        if k>100000: raise Exception("no conv")
    return math.exp(a*math.log(x)-math.log(a)-lbeta(a,b))*s
def jeff_lo1(n, tail=0.025):
    lo,hi=0.0,0.5
    for _ in range(200):
        m=(lo+hi)/2
        if ibeta_small(m,1.5,n-0.5)>tail: hi=m
        else: lo=m
    return (lo+hi)/2
def wilson(x,n):
    ph=x/n; d=1+z*z/n; c=(ph+z*z/(2*n))/d; h=z/d*math.sqrt(ph*(1-ph)/n+z*z/(4*n*n))
    lo,hi=max(0,c-h),min(1,c+h)
    if x==0: lo=0
    if x==n: hi=1
    return lo,hi
def ends(x,n):
    lo,hi=wilson(x,n)
    if x==n: lo=0.05**(1/n)
    elif x==1: lo=min(lo,jeff_lo1(n))
    if x==0: hi=1-0.05**(1/n)
    elif x==n-1: hi=max(hi,1-jeff_lo1(n))
    return lo,hi
def pmf(n,x,p): return math.comb(n,x)*p**x*(1-p)**(n-x)
def cov(I,n,p): return sum(pmf(n,x,p) for x in range(n+1) if I[x][0]<=p<=I[x][1])
def local(I,n,p,m=400):
    a=max(0,p-1/n); b=min(1,p+1/n)
    return sum(cov(I,n,a+(b-a)*(i+.5)/m) for i in range(m))/m
if __name__=="__main__":
    for n in (2,30,50):
        print("jeff_lo1 n=%d %.17g"%(n, jeff_lo1(n)))
    print("n=30 x=30 lo %.17g"%(0.05**(1/30)))
    print("n=1: x=1", ends(1,1), "x=0", ends(0,1))
    print("n=2 x=1", ends(1,2), "wilson", wilson(1,2))
    print("n=50 x=49", ends(49,50), "wilson", wilson(49,50))
    print("n=3 x=2 (metrics' pass@2) [%.17g, %.17g]" % ends(2,3))
    print("n=50 x=50 lo %.17g" % ends(50,50)[0])
    for n,p in ((50,0.98),(30,0.9),(100,0.99)):
        I=[ends(x,n) for x in range(n+1)]
        print("n=%d p=%g pointwise %.12f local %.12f"%(n,p,cov(I,n,p),local(I,n,p)))
