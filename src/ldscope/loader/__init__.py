"""Model of glibc's dynamic loader (ld.so): its cache, its configuration and its search path."""
