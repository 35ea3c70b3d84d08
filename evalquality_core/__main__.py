"""``python -m evalquality_core`` runs the ``eval-quality`` CLI."""

from evalquality_core.cli.main import main

if __name__ == "__main__":
    main()
