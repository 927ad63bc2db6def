"""The compiled parts, each optional (pure Python twins without a compiler): the proxy's HTML scanner
and the edge-list block splitter."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("proxy_addon._fastscan", ["proxy_addon/_fastscan.c"], optional=True),
    Extension("rankstore.sources._fastpairs", ["rankstore/sources/_fastpairs.c"], optional=True),
])
