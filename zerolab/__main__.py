from zerolab.cli import main

raise SystemExit(main())
