from goldevidence.cli import main

raise SystemExit(main())
