package chaos

// sysSetns is setns(2) on linux/arm64.
const sysSetns = 268
