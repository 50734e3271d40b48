"""Three tiny repair tasks (one bug each, public and hidden tests, a reference fix) shared by the
code-repair experiment tests that need real sandbox executions in seconds."""

TASKS = [
    {
        "task_id": "demo/add",
        "entry_point": "add",
        "program": "def add(a, b):\n    return a - b\n",
        "public_tests": [
            {"id": "p1", "kind": "assert", "code": "assert add(1, 2) == 3"},
            {"id": "p2", "kind": "assert", "code": "assert add(0, 0) == 0"},
        ],
        "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert add(5, 7) == 12"}],
        "reference": "def add(a, b):\n    return a + b\n",
    },
    {
        "task_id": "demo/smaller",
        "entry_point": "smaller",
        "program": "def smaller(a, b):\n    return a if a > b else b\n",
        "public_tests": [{"id": "p1", "kind": "assert", "code": "assert smaller(1, 2) == 1"}],
        "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert smaller(9, 3) == 3"}],
        "reference": "def smaller(a, b):\n    return a if a < b else b\n",
    },
    {
        "task_id": "demo/count",
        "entry_point": "count",
        "program": "def count(xs):\n    n = 0\n    for x in xs:\n        n += 2\n    return n\n",
        "public_tests": [{"id": "p1", "kind": "assert", "code": "assert count([1, 2, 3]) == 3"}],
        "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert count([7]) == 1"}],
        "reference": "def count(xs):\n    n = 0\n    for x in xs:\n        n += 1\n    return n\n",
    },
]
