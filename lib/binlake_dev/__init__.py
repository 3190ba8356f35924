"""Development helpers shared by the tests, the demo and the benchmarks (not part of binlake's
floors): :mod:`binlake_dev.mariadb`, a private throw-away MariaDB server."""
