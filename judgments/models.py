# Models arrive with the issue that builds this app; registered now so it migrates.
