from zerolab.frontends.cli import main

raise SystemExit(main())
