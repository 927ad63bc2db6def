"""The compiled parts, each optional (pure Python twins without a compiler): the proxy's HTML scanner,
the edge-list block splitter, the WAT envelope reader and its pages' links, the solver's product kernel
and the site links' gap coding."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # the header is generated (tools/gen_scan_tables.py): a new one must rebuild the module
        Extension(
            "proxy_addon._fastscan", ["proxy_addon/_fastscan.c"], depends=["proxy_addon/_scan_tables.h"], optional=True
        ),
        Extension("rankstore.sources._fastpairs", ["rankstore/sources/_fastpairs.c"], optional=True),
        Extension("rankstore.sources._fastwat", ["rankstore/sources/_fastwat.c"], optional=True),
        Extension("rankstore._fastlisted", ["rankstore/_fastlisted.c"], optional=True),
        Extension("rankstore._fastextract", ["rankstore/_fastextract.c"], optional=True),
        Extension("rankstore.store._fastgaps", ["rankstore/store/_fastgaps.c"], optional=True),
        # no fused multiply-add: the sums stay those of the Python twin (scipy's kernel), bit for bit
        Extension(
            "rankstore.solver._fastproduct",
            ["rankstore/solver/_fastproduct.c"],
            extra_compile_args=["-ffp-contract=off"],
            optional=True,
        ),
    ]
)
