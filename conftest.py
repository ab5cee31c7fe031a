pytest_plugins = ["tests.standins.fixtures"]
