"""The one compiled part: the proxy's HTML scanner in C (optional; pure Python without a compiler)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("proxy_addon._fastscan", ["proxy_addon/_fastscan.c"], optional=True)])
