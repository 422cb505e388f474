package chaos

// sysSetns is setns(2) on linux/amd64.
const sysSetns = 308
