BaJ
!Àw–MWF∑@