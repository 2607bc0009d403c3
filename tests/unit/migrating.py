"""Migration tests' moves: one app at a given migration, every other app at its newest (the
rows a test makes need today's tables of the apps it does not test), and back to the newest."""
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(node: tuple[str, str]):
    """The app of `node` at that migration, every other app at its newest; the historical apps
    registry of that state, for the test's models."""
    executor = MigrationExecutor(connection)
    target = [leaf for leaf in executor.loader.graph.leaf_nodes() if leaf[0] != node[0]] + [node]
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def migrate_to_newest() -> None:
    """Every app at its newest migration, as the other tests expect."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
