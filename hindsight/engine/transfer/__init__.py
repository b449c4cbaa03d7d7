"""Moving a bank between servers: export to one portable file and import from it. Imports memory,
banks and rules."""
