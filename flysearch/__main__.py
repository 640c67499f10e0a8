from flysearch.cli import main

main()
