"""The test harness: what the tests run against, none of it tests.

Real and fake servers (``airflow_server``, ``replay_server``, ``local_http``), proxies that count
or break requests (``counting_proxy``, ``fault_proxy``), a headless Chromium (``browser``), the
programs some tests run in a subprocess (``dag_test_runner``, ``sink_writer``) and small shared
helpers (``helpers``). ``tests/`` is on the path through pytest's ``pythonpath``, so tests import
``from support.helpers import ...``; scripts outside pytest (``dev/``, ``benchmarks/``) put
``tests/`` on ``sys.path`` first.
"""
