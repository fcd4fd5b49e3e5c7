import numpy as np, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"]="2"
import tensorflow as tf
from sklearn.linear_model import LogisticRegression
tf.config.threading.set_intra_op_parallelism_threads(1)
P={s:dict(np.load(f"/tmp/probe/{s}.npz")) for s in ("train","eval")}
PUNCT={1012,999,1029}
def oracle(d):
    f=[]
    for i,(a,b) in enumerate(d["spans"]):
        ws=np.where(d["owner"]==i)[0]; best=None
        for w in ws:
            st=d["starts"][w]
            if st<=a and b<=st+126: best=w; break
        if best is None: best=ws[-1]
        st=d["starts"][best]; lo=max(a-st,0)+1; hi=min(b-st,126)+1
        f.append(d["seq"][best,lo:hi].astype(np.float32).mean(0))
    return np.array(f)
def lr(ftr,fev):
    for C in (0.01,0.1,1,10):
        m=LogisticRegression(C=C,max_iter=3000).fit(ftr,P["train"]["labels"]); print(" C",C,round(m.score(fev,P["eval"]["labels"]),4))
def units(d,kind):
    docs=[]
    for i in range(len(d["labels"])):
        us=[]
        for w in np.where(d["owner"]==i)[0]:
            x=d["X"][w]; h=d["seq"][w].astype(np.float32); n=(x>0).sum()
            if kind=="tokens": us.extend(h[1:n-1])
            elif kind=="windows": us.append(h[1:n-1].mean(0))
            else:
                cut=[0]+[k+1 for k in range(1,n-1) if x[k] in PUNCT]+[n-1]
                if kind=="chunks16": cut=list(range(1,n-1,16))+[n-1]
                for a,b in zip(cut[:-1],cut[1:]):
                    a=max(a,1)
                    if b>a: us.append(h[a:b].mean(0))
        docs.append(np.array(us))
    N=max(len(u) for u in docs); U=np.zeros((len(docs),N,384),np.float32); M=np.zeros((len(docs),N),np.float32)
    for i,u in enumerate(docs): U[i,:len(u)]=u; M[i,:len(u)]=1
    return U,M
def train(kind,pool,epochs=40,lr_=1e-3,wd=1e-2):
    (Ut,Mt),(Ue,Me)=units(P["train"],kind),units(P["eval"],kind)
    yt=P["train"]["labels"]; ye=P["eval"]["labels"]
    tf.random.set_seed(0)
    score=tf.keras.Sequential([tf.keras.layers.Dense(128,activation="tanh"),tf.keras.layers.Dense(1)])
    head=tf.keras.layers.Dense(2)
    def f(U,M):
        if pool=="att":
            s=tf.squeeze(score(U),-1)+(M-1)*1e9; a=tf.nn.softmax(s,-1); return head(tf.einsum("bn,bnh->bh",a,U))
        if pool=="max": l=head(U); return tf.reduce_max(l+((M-1)*1e9)[...,None],1)
        if pool=="mean": return head(tf.reduce_sum(U*M[...,None],1)/tf.reduce_sum(M,1,keepdims=True))
    opt=tf.keras.optimizers.AdamW(lr_,weight_decay=wd); res=[]
    for ep in range(epochs):
        perm=np.random.RandomState(ep).permutation(len(yt))
        for b in range(0,len(yt),16):
            j=perm[b:b+16]
            with tf.GradientTape() as t:
                loss=tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yt[j],f(Ut[j],Mt[j])))
            v=score.trainable_variables+head.trainable_variables; opt.apply_gradients(zip(t.gradient(loss,v),v))
        if ep%5==4:
            acc=float(np.mean(np.argmax(f(Ue,Me).numpy(),1)==ye)); tr=float(np.mean(np.argmax(f(Ut,Mt).numpy(),1)==yt)); res.append((ep+1,round(tr,3),round(acc,3)))
    print(kind,pool,res,flush=True)
which=sys.argv[1]
if which=="oracle":
    print("oracle in-context sentence mean"); lr(oracle(P["train"]),oracle(P["eval"]))
    print("sentence alone mean"); lr(P["train"]["sent"],P["eval"]["sent"])
elif not which.startswith("wc"):
    kind,pool=which.split(":"); train(kind,pool)
def wildcat(kind,k,epochs=40,lr_=1e-3,wd=1e-2,alpha=1.0):
    (Ut,Mt),(Ue,Me)=units(P["train"],kind),units(P["eval"],kind)
    yt=P["train"]["labels"].astype(np.float32); ye=P["eval"]["labels"]
    tf.random.set_seed(0); lin=tf.keras.layers.Dense(1)
    def f(U,M):
        s=tf.squeeze(lin(U),-1); big=1e9*(1-M)
        top=tf.reduce_mean(tf.math.top_k(s-big,k).values,-1); bot=-tf.reduce_mean(tf.math.top_k(-s-big,k).values,-1)
        return top+alpha*bot
    opt=tf.keras.optimizers.AdamW(lr_,weight_decay=wd); res=[]
    for ep in range(epochs):
        perm=np.random.RandomState(ep).permutation(len(yt))
        for b in range(0,len(yt),16):
            j=perm[b:b+16]
            with tf.GradientTape() as t:
                loss=tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(yt[j],f(Ut[j],Mt[j])))
            v=lin.trainable_variables; opt.apply_gradients(zip(t.gradient(loss,v),v))
        if ep%5==4:
            acc=float(np.mean((f(Ue,Me).numpy()>0)==ye)); tr=float(np.mean((f(Ut,Mt).numpy()>0)==yt)); res.append((ep+1,round(tr,3),round(acc,3)))
    print(kind,"wildcat k",k,res,flush=True)
if which.startswith("wc"):
    _,kind,k=which.split(":"); wildcat(kind,int(k))
