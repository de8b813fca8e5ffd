# nnk.mk - make rules for .nnk kernels in an Automake project (GNU make).
# NNK_PROG_NNKC (nnk.m4) substitutes this file for the line @nnk_rules@
# in Makefile.am.  A .nnk file compiles to an object with its header:
#
#     bin_PROGRAMS = app
#     app_SOURCES = app.c kernels.nnk
#     BUILT_SOURCES = kernels.h
#     @nnk_rules@
#
# nnkc writes a depfile for every object, listing the imported .nnk files,
# so editing an import rebuilds exactly the objects that use it.
# NNKCFLAGS (user) and AM_NNKCFLAGS (project) are passed to nnkc.

.SUFFIXES: .nnk .h .o .lo
NNKC_V = $(NNKC_V_@AM_V@)
NNKC_V_ = $(NNKC_V_@AM_DEFAULT_V@)
NNKC_V_0 = @echo "  NNKC    " $@;
NNKC_V_1 =

.nnk.o:
	@$(MKDIR_P) $(DEPDIR) $(@D)
	$(NNKC_V)$(NNKC) -c $(AM_NNKCFLAGS) $(NNKCFLAGS) -I$(srcdir) -MD -MP -MF $(DEPDIR)/$(@F).nnkd -MT $@ -o $@ $<

.nnk.lo:
	@$(MKDIR_P) $(DEPDIR) $(@D)
	$(NNKC_V)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(NNKC) -c $(AM_NNKCFLAGS) $(NNKCFLAGS) -I$(srcdir) \
	  -MD -MP -MF $(DEPDIR)/$(@F).nnkd -MT $@ -o $@ $<

.nnk.h:
	@$(MKDIR_P) $(DEPDIR) $(@D)
	$(NNKC_V)$(NNKC) --emit-header $(AM_NNKCFLAGS) $(NNKCFLAGS) -I$(srcdir) -MD -MP -MF $(DEPDIR)/$(@F).nnkd -MT $@ -o $@ $<

-include $(wildcard $(DEPDIR)/*.nnkd)

CLEANFILES += $(wildcard $(DEPDIR)/*.nnkd)
