from assistant.cli.app import main

main()
